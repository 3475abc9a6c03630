//! Manifest files and manifest lists against pypaimon 2.1 and fastavro.
//!
//! `tests/python/manifest_oracle.py` has pypaimon write a partitioned primary-key table over a
//! few commits; tarn must read every manifest and manifest list there exactly as fastavro does.
//! Then tarn writes a manifest and a manifest list into that table, and fastavro and pypaimon's
//! own manifest readers must see every field tarn wrote.
//!
//! The interpreter is `TARN_TEST_PYTHON`, else `$HOME/.cache/tarn-venv/bin/python` (what
//! `scripts/test.sh` creates); it needs pypaimon and fastavro. Without one this test fails and
//! says so: it never skips.

mod common;
use common::repo_path;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value as Json, json};
use tarn::storage::spec::manifest::{
    DataFileMeta, FileKind, FileSource, MANIFEST_ENTRY_SCHEMA, MANIFEST_FILE_META_SCHEMA,
    ManifestEntry, ManifestFileMeta, SimpleStats, read_manifest, read_manifest_list,
    write_manifest, write_manifest_list,
};

/// Fields pypaimon 2.1 adds to manifest-list records that Paimon Java's schema doesn't have.
const PYPAIMON_ONLY_LIST_FIELDS: [&str; 2] = ["_TOTAL_BUCKETS", "_EXTRA_FILES"];

fn python() -> String {
    common::python_with("pypaimon, fastavro", "the manifest compatibility test")
}

fn oracle(python: &str, args: &[&str]) -> Json {
    let script = repo_path("tests/python/manifest_oracle.py");
    let out = Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .expect("run manifest_oracle.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "manifest_oracle.py {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("oracle output is not JSON ({e}): {last}"))
}

/// A scratch directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "tarn-{label}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A serialized one-column BIGINT `BinaryRow`: arity, RowKind/null-bit word, the value.
fn bigint_row(value: i64) -> Vec<u8> {
    let mut row = vec![0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
    row.extend_from_slice(&value.to_le_bytes());
    row
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// The JSON shape the oracle prints: Avro field names, bytes as hex, timestamps as millis.

fn stats_json(stats: &SimpleStats) -> Json {
    json!({
        "_MIN_VALUES": hex(&stats.min_values),
        "_MAX_VALUES": hex(&stats.max_values),
        "_NULL_COUNTS": stats.null_counts,
    })
}

fn entry_json(entry: &ManifestEntry) -> Json {
    let f = &entry.file;
    json!({
        "_VERSION": 2,
        "_KIND": match entry.kind { FileKind::Add => 0, FileKind::Delete => 1 },
        "_PARTITION": hex(&entry.partition),
        "_BUCKET": entry.bucket,
        "_TOTAL_BUCKETS": entry.total_buckets,
        "_FILE": {
            "_FILE_NAME": f.file_name,
            "_FILE_SIZE": f.file_size,
            "_ROW_COUNT": f.row_count,
            "_MIN_KEY": hex(&f.min_key),
            "_MAX_KEY": hex(&f.max_key),
            "_KEY_STATS": stats_json(&f.key_stats),
            "_VALUE_STATS": stats_json(&f.value_stats),
            "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
            "_SCHEMA_ID": f.schema_id,
            "_LEVEL": f.level,
            "_EXTRA_FILES": f.extra_files,
            "_CREATION_TIME": f.creation_time,
            "_DELETE_ROW_COUNT": f.delete_row_count,
            "_EMBEDDED_FILE_INDEX": f.embedded_file_index.as_deref().map(hex),
            "_FILE_SOURCE": f.file_source.map(|s| match s { FileSource::Append => 0, FileSource::Compact => 1 }),
            "_VALUE_STATS_COLS": f.value_stats_cols,
            "_EXTERNAL_PATH": f.external_path,
            "_FIRST_ROW_ID": f.first_row_id,
            "_WRITE_COLS": f.write_cols,
            "_WRITE_COLS_SEQUENCES": f.write_cols_sequences,
        },
    })
}

fn meta_json(meta: &ManifestFileMeta) -> Json {
    json!({
        "_VERSION": 2,
        "_FILE_NAME": meta.file_name,
        "_FILE_SIZE": meta.file_size,
        "_NUM_ADDED_FILES": meta.num_added_files,
        "_NUM_DELETED_FILES": meta.num_deleted_files,
        "_PARTITION_STATS": stats_json(&meta.partition_stats),
        "_SCHEMA_ID": meta.schema_id,
        "_MIN_BUCKET": meta.min_bucket,
        "_MAX_BUCKET": meta.max_bucket,
        "_MIN_LEVEL": meta.min_level,
        "_MAX_LEVEL": meta.max_level,
        "_MIN_ROW_ID": meta.min_row_id,
        "_MAX_ROW_ID": meta.max_row_id,
    })
}

fn without(mut value: Json, keys: &[&str]) -> Json {
    let object = value.as_object_mut().expect("a JSON object");
    for key in keys {
        object.remove(*key);
    }
    value
}

/// Asserts two lists of records are equal, naming the first differing record and field.
fn assert_records(what: &str, ours: &[Json], theirs: &[Json]) {
    assert_eq!(ours.len(), theirs.len(), "{what}: record count");
    for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
        if a != b {
            let (a_obj, b_obj) = (a.as_object().unwrap(), b.as_object().unwrap());
            for key in a_obj.keys().chain(b_obj.keys()) {
                assert_eq!(
                    a_obj.get(key),
                    b_obj.get(key),
                    "{what}: record {i} field {key}"
                );
            }
            panic!("{what}: record {i} differs: tarn {a} vs {b}");
        }
    }
}

fn records(file: &Json) -> Vec<Json> {
    file["records"].as_array().expect("records").clone()
}

/// The pypaimon table's manifest directory, after the oracle created it.
fn create_table(python: &str, warehouse: &Path) -> (PathBuf, Json) {
    let created = oracle(python, &["create", warehouse.to_str().unwrap()]);
    let dir = PathBuf::from(created["manifest_dir"].as_str().expect("manifest_dir"));
    (dir, created)
}

#[test]
fn tarn_reads_what_pypaimon_wrote() {
    let python = python();
    let tmp = TempDir::new("manifest-read");
    let (dir, created) = create_table(&python, &tmp.0.join("wh"));
    let files = created["files"].as_object().expect("files");

    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("manifest-"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        files.keys().cloned().collect::<Vec<_>>(),
        "the oracle saw other files"
    );

    let (mut lists, mut manifests, mut empty_lists, mut deletes) = (0, 0, 0, 0);
    for name in &names {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let theirs = &files[name];
        assert_eq!(theirs["codec"], "zstandard", "{name}");
        if name.starts_with("manifest-list-") {
            let metas = read_manifest_list(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            let expected: Vec<Json> = records(theirs)
                .into_iter()
                .map(|r| without(r, &PYPAIMON_ONLY_LIST_FIELDS))
                .collect();
            let ours: Vec<Json> = metas.iter().map(meta_json).collect();
            assert_records(name, &ours, &expected);
            lists += 1;
            empty_lists += usize::from(metas.is_empty());
        } else {
            let entries = read_manifest(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            let ours: Vec<Json> = entries.iter().map(entry_json).collect();
            assert_records(name, &ours, &records(theirs));
            manifests += 1;
            deletes += entries
                .iter()
                .filter(|e| e.kind == FileKind::Delete)
                .count();
        }
    }
    // Three commits: a base and a delta list each, one manifest each; the first base list is
    // empty and the overwrite deleted the two files of partition 2026-12-02.
    assert_eq!((lists, manifests, empty_lists, deletes), (6, 3, 1, 2));
}

#[test]
fn pypaimon_and_fastavro_read_what_tarn_wrote() {
    let python = python();
    let tmp = TempDir::new("manifest-write");
    let warehouse = tmp.0.join("wh");
    let (dir, created) = create_table(&python, &warehouse);

    // Real partition and key rows from pypaimon's files, so pypaimon can decode them.
    let files = created["files"].as_object().unwrap();
    let (manifest_name, _) = files
        .iter()
        .find(|(n, f)| {
            !n.starts_with("manifest-list-") && f["records"].as_array().unwrap().len() >= 2
        })
        .expect("a pypaimon manifest with two entries");
    let originals = read_manifest(&std::fs::read(dir.join(manifest_name)).unwrap()).unwrap();
    let (list_name, _) = files
        .iter()
        .find(|(n, f)| {
            n.starts_with("manifest-list-") && !f["records"].as_array().unwrap().is_empty()
        })
        .expect("a non-empty pypaimon manifest list");
    let original_metas = read_manifest_list(&std::fs::read(dir.join(list_name)).unwrap()).unwrap();

    let unchanged = originals[0].clone();
    let everything_set = ManifestEntry {
        kind: FileKind::Delete,
        bucket: 1,
        total_buckets: 2,
        file: DataFileMeta {
            file_name: "data-tarn-1.parquet".into(),
            file_size: 123_456_789_012,
            row_count: 42,
            key_stats: SimpleStats {
                null_counts: Some(vec![Some(0)]),
                ..originals[1].file.key_stats.clone()
            },
            value_stats: SimpleStats {
                min_values: bigint_row(-5),
                max_values: bigint_row(i64::MAX),
                null_counts: Some(vec![Some(0), None, Some(7)]),
            },
            min_sequence_number: 5,
            max_sequence_number: i64::MAX,
            schema_id: 0,
            level: 4,
            extra_files: vec!["data-tarn-1.parquet.index".into(), "ü.bin".into()],
            creation_time: Some(1_767_225_600_123),
            delete_row_count: Some(3),
            embedded_file_index: Some(vec![0, 1, 0xfe, 0xff]),
            file_source: Some(FileSource::Compact),
            value_stats_cols: Some(vec!["id".into(), "customer".into()]),
            external_path: Some("file:/tmp/external/data-tarn-1.parquet".into()),
            first_row_id: Some(1_000),
            write_cols: Some(vec!["id".into(), "customer".into(), "amount".into()]),
            write_cols_sequences: Some(vec![7, 8, 9]),
            ..originals[1].file.clone()
        },
        ..originals[1].clone()
    };
    let nothing_set = ManifestEntry {
        kind: FileKind::Add,
        file: DataFileMeta {
            file_name: "data-tarn-2.parquet".into(),
            key_stats: SimpleStats {
                null_counts: None,
                ..originals[0].file.key_stats.clone()
            },
            value_stats: SimpleStats::empty(),
            creation_time: None,
            delete_row_count: None,
            embedded_file_index: None,
            file_source: None,
            value_stats_cols: None,
            external_path: None,
            first_row_id: None,
            write_cols: None,
            write_cols_sequences: None,
            ..originals[0].file.clone()
        },
        ..originals[0].clone()
    };
    let entries = vec![unchanged, everything_set, nothing_set];

    let metas = vec![
        original_metas[0].clone(),
        ManifestFileMeta {
            file_name: "manifest-tarn-a".into(),
            file_size: 9_876,
            num_added_files: 3,
            num_deleted_files: 1,
            partition_stats: SimpleStats {
                null_counts: Some(vec![Some(0)]),
                ..original_metas[0].partition_stats.clone()
            },
            schema_id: 0,
            min_bucket: Some(0),
            max_bucket: Some(1),
            min_level: Some(0),
            max_level: Some(4),
            min_row_id: Some(1_000),
            max_row_id: Some(1_041),
        },
        ManifestFileMeta {
            file_name: "manifest-tarn-b".into(),
            file_size: 1,
            num_added_files: 0,
            num_deleted_files: 0,
            partition_stats: SimpleStats {
                null_counts: None,
                ..original_metas[0].partition_stats.clone()
            },
            schema_id: 0,
            min_bucket: None,
            max_bucket: None,
            min_level: None,
            max_level: None,
            min_row_id: None,
            max_row_id: None,
        },
    ];

    let manifest = write_manifest(&entries).unwrap();
    let list = write_manifest_list(&metas).unwrap();
    assert_eq!(read_manifest(&manifest).unwrap(), entries);
    assert_eq!(read_manifest_list(&list).unwrap(), metas);
    std::fs::write(dir.join("manifest-tarn-0"), &manifest).unwrap();
    std::fs::write(dir.join("manifest-list-tarn-0"), &list).unwrap();

    let out = oracle(
        &python,
        &[
            "read",
            warehouse.to_str().unwrap(),
            "manifest-tarn-0",
            "manifest-list-tarn-0",
        ],
    );

    // fastavro: the header is Java's (schema text, zstandard, nothing else) and every field
    // reads back.
    let fastavro = &out["fastavro"];
    for (file, schema) in [
        (&fastavro["manifest"], MANIFEST_ENTRY_SCHEMA),
        (&fastavro["manifest_list"], MANIFEST_FILE_META_SCHEMA),
    ] {
        assert_eq!(file["codec"], "zstandard");
        assert_eq!(file["schema"], schema);
        assert_eq!(file["metadata_keys"], json!(["avro.codec", "avro.schema"]));
    }
    let ours: Vec<Json> = entries.iter().map(entry_json).collect();
    assert_records("fastavro manifest", &ours, &records(&fastavro["manifest"]));
    let ours: Vec<Json> = metas.iter().map(meta_json).collect();
    assert_records(
        "fastavro manifest list",
        &ours,
        &records(&fastavro["manifest_list"]),
    );

    // pypaimon's ManifestFileManager / ManifestListManager: same values (no _VERSION in its
    // objects; its two extra manifest-list fields are absent from Java's schema, so null).
    let pypaimon = &out["pypaimon"];
    let ours: Vec<Json> = entries
        .iter()
        .map(|e| without(entry_json(e), &["_VERSION"]))
        .collect();
    let theirs = pypaimon["manifest"].as_array().unwrap();
    assert_records("pypaimon manifest", &ours, theirs);
    let ours: Vec<Json> = metas
        .iter()
        .map(|m| {
            let mut value = without(meta_json(m), &["_VERSION"]);
            for key in PYPAIMON_ONLY_LIST_FIELDS {
                value[key] = Json::Null;
            }
            value
        })
        .collect();
    let theirs = pypaimon["manifest_list"].as_array().unwrap();
    assert_records("pypaimon manifest list", &ours, theirs);
}
