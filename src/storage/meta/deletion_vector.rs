//! Paimon deletion vectors: which rows of a data file are deleted, and the index files that
//! hold them.
//!
//! A table with `deletion-vectors.enabled` does not rewrite a data file to delete rows from it:
//! it records the deleted row positions in a deletion vector, a roaring bitmap, and readers skip
//! those rows. The vectors of a bucket live together in one `DELETION_VECTORS` index file under
//! `<table>/index/`, named by the table's index manifest (see [`crate::storage::meta::index_manifest`]) with a
//! byte range per data file. Tarn must read these files byte-compatibly to serve tables Flink,
//! Spark or pypaimon wrote with deletion vectors, and write them the same way to delete rows
//! without rewriting files. This module is only the storage format.
//!
//! The format is Paimon Java's `BitmapDeletionVector` (also pypaimon's):
//!
//! ```text
//! index file := version byte 1, then one serialized vector per data file, back to back
//! vector     := size: i32 BE | data: size bytes | crc: i32 BE (CRC-32 of data)
//! data       := magic 1581511376 as i32 BE | 32-bit roaring bitmap, portable serialization
//! ```
//!
//! A [`DeletionVectorMeta`] locates a vector in its file: `offset` is where its size int starts
//! and `length` equals `size`. Paimon's 64-bit variant (`Bitmap64DeletionVector`, magic
//! 1681511377 written little-endian, for files of more than `i32::MAX` rows) is recognised and
//! refused. Like Java, the bitmap is run-optimized before it is serialized.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};

use object_store::path::Path;
use roaring::RoaringBitmap;

use crate::storage::StorageError;
use crate::storage::io::file_io::FileIO;
use crate::storage::meta::index_manifest::{
    DELETION_VECTORS_INDEX, DeletionVectorMeta, IndexFileMeta,
};

type Result<T> = std::result::Result<T, StorageError>;

/// Magic number at the start of a 32-bit vector's data (Java `BitmapDeletionVector`).
pub const MAGIC_NUMBER: i32 = 1_581_511_376;
/// Magic number of Java's `Bitmap64DeletionVector`, which it writes little-endian.
const BITMAP64_MAGIC_NUMBER: i32 = 1_681_511_377;
/// First byte of every deletion-vector index file (Java `VERSION_ID_V1`).
pub const INDEX_FILE_VERSION: u8 = 1;
/// Folder of index files in a table (Java `FileStorePathFactory.INDEX_PATH`).
pub const INDEX_DIR: &str = "index";
/// Name prefix of index files (Java `FileStorePathFactory.INDEX_PREFIX`).
pub const INDEX_FILE_PREFIX: &str = "index-";
/// Largest row position a 32-bit vector holds (Java `RoaringBitmap32.MAX_VALUE`).
pub const MAX_POSITION: u64 = i32::MAX as u64;

/// The deleted row positions of one data file (Java `BitmapDeletionVector`).
#[derive(Debug, Clone, Default)]
pub struct DeletionVector {
    bitmap: RoaringBitmap,
}

/// Equal when the same positions are deleted, however the bitmaps store them.
impl PartialEq for DeletionVector {
    fn eq(&self, other: &Self) -> bool {
        self.bitmap.len() == other.bitmap.len() && self.bitmap.is_subset(&other.bitmap)
    }
}

impl Eq for DeletionVector {}

impl DeletionVector {
    /// An empty vector: no row deleted.
    pub fn new() -> Self {
        Self::default()
    }

    /// A vector deleting `positions` (each at most [`MAX_POSITION`]).
    pub fn from_positions(positions: impl IntoIterator<Item = u64>) -> Result<Self> {
        let mut dv = Self::new();
        for position in positions {
            dv.delete(position)?;
        }
        Ok(dv)
    }

    /// Marks row `position` deleted; `true` if it was not deleted before. Positions past
    /// [`MAX_POSITION`] are an error, as in Java.
    pub fn delete(&mut self, position: u64) -> Result<bool> {
        let position = u32::try_from(position)
            .ok()
            .filter(|p| u64::from(*p) <= MAX_POSITION)
            .ok_or_else(|| {
                StorageError::Unsupported(format!(
                    "cannot delete row {position}: deletion vectors hold row positions up to \
                     {MAX_POSITION} (64-bit deletion vectors are not supported)"
                ))
            })?;
        Ok(self.bitmap.insert(position))
    }

    pub fn is_deleted(&self, position: u64) -> bool {
        u32::try_from(position).is_ok_and(|p| self.bitmap.contains(p))
    }

    /// Bytes the bitmap holds in memory (its serialized size: the containers' arrays and
    /// bitmaps, as stored).
    pub fn memory_size(&self) -> usize {
        self.bitmap.serialized_size()
    }

    /// How many rows are deleted.
    pub fn cardinality(&self) -> u64 {
        self.bitmap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bitmap.is_empty()
    }

    /// Adds every position `other` deletes.
    pub fn merge(&mut self, other: &DeletionVector) {
        self.bitmap |= &other.bitmap;
    }

    /// The deleted positions, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.bitmap.iter().map(u64::from)
    }

    /// Appends the serialized vector (size, data, CRC) to `out` and returns its `size`, the
    /// [`DeletionVectorMeta::length`] Paimon records for it.
    pub fn serialize_into(&self, out: &mut Vec<u8>) -> Result<i32> {
        let mut bitmap = self.bitmap.clone();
        bitmap.optimize(); // Java's RoaringBitmap32.serialize runs runOptimize first
        let size = 4 + bitmap.serialized_size();
        let size = i32::try_from(size)
            .map_err(|_| StorageError::Unsupported("deletion vector over 2 GiB".to_owned()))?;
        out.reserve(size as usize + 8);
        out.extend_from_slice(&size.to_be_bytes());
        let data_start = out.len();
        out.extend_from_slice(&MAGIC_NUMBER.to_be_bytes());
        bitmap
            .serialize_into(&mut *out)
            .expect("writing to a Vec cannot fail");
        let crc = crc32fast::hash(&out[data_start..]);
        out.extend_from_slice(&crc.to_be_bytes());
        Ok(size)
    }

    /// The serialized vector (Java `DeletionVector.serializeToBytes`).
    pub fn serialize(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.serialize_into(&mut out)?;
        Ok(out)
    }

    /// Decodes one serialized vector: `bytes` is its size int and data, with or without the
    /// trailing CRC (checked when present), and nothing else.
    pub fn deserialize(bytes: &[u8]) -> Result<Self> {
        let int_at = |at: usize| {
            bytes
                .get(at..at + 4)
                .map(|b| i32::from_be_bytes(b.try_into().expect("4 bytes")))
        };
        let (Some(size), Some(magic)) = (int_at(0), int_at(4)) else {
            return Err(corrupt(format!("{} bytes are too short", bytes.len())));
        };
        if magic != MAGIC_NUMBER {
            if magic.swap_bytes() == BITMAP64_MAGIC_NUMBER {
                return Err(StorageError::Unsupported(
                    "64-bit deletion vectors are not supported".to_owned(),
                ));
            }
            return Err(corrupt(format!(
                "invalid magic number {magic}, expected {MAGIC_NUMBER}"
            )));
        }
        let end = usize::try_from(size)
            .ok()
            .filter(|s| *s >= 4)
            .map(|s| 4 + s)
            .ok_or_else(|| corrupt(format!("invalid size {size}")))?;
        if bytes.len() == end + 4 {
            let stored = u32::from_be_bytes(bytes[end..].try_into().expect("4 bytes"));
            let actual = crc32fast::hash(&bytes[4..end]);
            if stored != actual {
                return Err(corrupt(format!(
                    "CRC mismatch (stored {stored:#010x}, computed {actual:#010x})"
                )));
            }
        } else if bytes.len() != end {
            return Err(corrupt(format!(
                "size {size} does not match the {} bytes given",
                bytes.len()
            )));
        }
        let mut rest = &bytes[8..end];
        let bitmap = RoaringBitmap::deserialize_from(&mut rest)
            .map_err(|e| corrupt(format!("invalid roaring bitmap: {e}")))?;
        if !rest.is_empty() {
            return Err(corrupt(format!(
                "{} bytes after the roaring bitmap",
                rest.len()
            )));
        }
        Ok(Self { bitmap })
    }
}

fn corrupt(message: String) -> StorageError {
    StorageError::format(format!("corrupt deletion vector: {message}"))
}

// ---------------------------------------------------------------------------------------------
// Index files
// ---------------------------------------------------------------------------------------------

/// Encodes a `DELETION_VECTORS` index file named `file_name` holding `vectors` in order, and
/// describes it (Java `DeletionFileWriter`). No vectors gives a file of just the version byte,
/// which Java writes to replace a bucket's last index file.
pub fn encode_index_file(
    file_name: &str,
    vectors: &[(&str, &DeletionVector)],
) -> Result<(Vec<u8>, IndexFileMeta)> {
    let mut bytes = vec![INDEX_FILE_VERSION];
    let mut ranges = Vec::with_capacity(vectors.len());
    let mut seen = HashSet::with_capacity(vectors.len());
    for (data_file, dv) in vectors {
        if !seen.insert(*data_file) {
            return Err(StorageError::format(format!(
                "two deletion vectors for data file {data_file} in one index file"
            )));
        }
        let offset = i32::try_from(bytes.len()).map_err(|_| {
            StorageError::Unsupported("deletion vector index file over 2 GiB".to_owned())
        })?;
        let length = dv.serialize_into(&mut bytes)?;
        ranges.push(DeletionVectorMeta {
            data_file_name: (*data_file).to_owned(),
            offset,
            length,
            cardinality: Some(dv.cardinality() as i64),
        });
    }
    let meta = IndexFileMeta {
        index_type: DELETION_VECTORS_INDEX.to_owned(),
        file_name: file_name.to_owned(),
        file_size: bytes.len() as i64,
        row_count: ranges.len() as i64,
        dv_ranges: Some(ranges),
        external_path: None,
        global_index: None,
    };
    Ok((bytes, meta))
}

/// Where the vector `meta` describes lies in its index file: size int, data and CRC.
pub fn byte_range(meta: &DeletionVectorMeta) -> Result<Range<usize>> {
    match (usize::try_from(meta.offset), usize::try_from(meta.length)) {
        (Ok(offset), Ok(length)) if offset >= 1 => Ok(offset..offset + length + 8),
        _ => Err(corrupt(format!(
            "invalid range (offset {}, length {}) for data file {}",
            meta.offset, meta.length, meta.data_file_name
        ))),
    }
}

/// Decodes the vector `meta` describes from exactly the bytes of its [`byte_range`] (a ranged
/// read of the index file), checking its size against `meta.length` as Java does.
pub fn read_range(range_bytes: &[u8], meta: &DeletionVectorMeta) -> Result<DeletionVector> {
    let size = range_bytes
        .get(..4)
        .map(|b| i32::from_be_bytes(b.try_into().expect("4 bytes")));
    if size != Some(meta.length) {
        return Err(corrupt(format!(
            "size {size:?} in the index file, {} in the index manifest, for data file {}",
            meta.length, meta.data_file_name
        )));
    }
    DeletionVector::deserialize(range_bytes)
}

/// Decodes the vector `meta` describes from a whole index file, checking its version byte.
pub fn read_from_index_file(file: &[u8], meta: &DeletionVectorMeta) -> Result<DeletionVector> {
    match file.first() {
        Some(&INDEX_FILE_VERSION) => {}
        other => {
            return Err(corrupt(format!(
                "index file version {other:?}, expected {INDEX_FILE_VERSION}"
            )));
        }
    }
    let range = byte_range(meta)?;
    let bytes = file.get(range.clone()).ok_or_else(|| {
        corrupt(format!(
            "range {range:?} of data file {} is past the end of its {}-byte index file",
            meta.data_file_name,
            file.len()
        ))
    })?;
    read_range(bytes, meta)
}

/// Names of new index files: `index-<uuid>-<n>`, one uuid per namer and `n` counting from 0
/// (Java `FileStorePathFactory.indexFileFactory`).
#[derive(Debug)]
pub struct IndexFileNamer {
    uuid: uuid::Uuid,
    next: AtomicU32,
}

impl Default for IndexFileNamer {
    fn default() -> Self {
        Self {
            uuid: uuid::Uuid::new_v4(),
            next: AtomicU32::new(0),
        }
    }
}

impl IndexFileNamer {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn next_name(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{INDEX_FILE_PREFIX}{}-{n}", self.uuid)
    }
}

/// Path of index file `name` of the table at `table`: `<table>/index/<name>`.
pub fn index_path(table: &Path, name: &str) -> Path {
    table.clone().join(INDEX_DIR).join(name)
}

/// Path of index file `meta` of the table at `table` ([`index_path`]). Index files in an
/// external path are refused.
pub fn index_file_path(table: &Path, meta: &IndexFileMeta) -> Result<Path> {
    if let Some(external) = &meta.external_path {
        return Err(StorageError::Unsupported(format!(
            "index file {} is in an external path ({external})",
            meta.file_name
        )));
    }
    Ok(index_path(table, &meta.file_name))
}

/// Writes `vectors` as a new index file of the table at `table` and describes it.
pub async fn write_index_file(
    io: &FileIO,
    table: &Path,
    names: &IndexFileNamer,
    vectors: &[(&str, &DeletionVector)],
) -> Result<IndexFileMeta> {
    let (bytes, meta) = encode_index_file(&names.next_name(), vectors)?;
    io.write(&index_file_path(table, &meta)?, bytes).await?;
    Ok(meta)
}

/// The vectors of `data_files` in index file `index_file` of the table at `table` (read once);
/// data files the index file has no vector for are left out.
pub async fn read_deletion_vectors<'a>(
    io: &FileIO,
    table: &Path,
    index_file: &IndexFileMeta,
    data_files: impl IntoIterator<Item = &'a str>,
) -> Result<HashMap<String, DeletionVector>> {
    let wanted: HashSet<&str> = data_files.into_iter().collect();
    let metas: Vec<&DeletionVectorMeta> = index_file
        .dv_ranges
        .iter()
        .flatten()
        .filter(|m| wanted.contains(m.data_file_name.as_str()))
        .collect();
    if metas.is_empty() {
        return Ok(HashMap::new());
    }
    let bytes = io.read(&index_file_path(table, index_file)?).await?;
    metas
        .into_iter()
        .map(|m| Ok((m.data_file_name.clone(), read_from_index_file(&bytes, m)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use std::sync::Arc;

    fn dv(positions: &[u64]) -> DeletionVector {
        DeletionVector::from_positions(positions.iter().copied()).unwrap()
    }

    /// What Paimon Java wrote for its compatibility fixture `dvindex-32`: `{2, 3}` then `{1}`.
    const JAVA_INDEX_FILE: &str = "01\
        00000018 5e43f2d0 3a300000 01000000 00000100 10000000 02000300 c898f63d\
        00000016 5e43f2d0 3a300000 01000000 00000000 10000000 0100 fa2b5192";

    fn hex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
            .collect()
    }

    #[test]
    fn writes_what_java_writes() {
        let (bytes, meta) =
            encode_index_file("index-x-0", &[("a", &dv(&[2, 3])), ("b", &dv(&[1]))]).unwrap();
        assert_eq!(bytes, hex(JAVA_INDEX_FILE));
        let ranges = meta.dv_ranges.as_ref().unwrap();
        assert_eq!(
            (ranges[0].offset, ranges[0].length, ranges[0].cardinality),
            (1, 24, Some(2))
        );
        assert_eq!(
            (ranges[1].offset, ranges[1].length, ranges[1].cardinality),
            (33, 22, Some(1))
        );
        assert_eq!((meta.file_size, meta.row_count), (63, 2));
        assert_eq!(meta.index_type, "DELETION_VECTORS");
        assert_eq!(
            read_from_index_file(&bytes, &ranges[0]).unwrap(),
            dv(&[2, 3])
        );
        assert_eq!(read_from_index_file(&bytes, &ranges[1]).unwrap(), dv(&[1]));
    }

    #[test]
    fn api_basics() {
        let mut v = DeletionVector::new();
        assert!(v.is_empty());
        assert!(v.delete(5).unwrap());
        assert!(!v.delete(5).unwrap());
        assert!(v.delete(MAX_POSITION).unwrap());
        let err = v.delete(MAX_POSITION + 1).unwrap_err();
        assert!(matches!(err, StorageError::Unsupported(_)), "{err}");
        assert!(v.is_deleted(5) && v.is_deleted(MAX_POSITION) && !v.is_deleted(6));
        assert!(!v.is_deleted(u64::MAX));
        assert!(DeletionVector::from_positions([1, MAX_POSITION + 1]).is_err());
        assert_eq!(v.cardinality(), 2);
        v.merge(&dv(&[1, 5, 7]));
        assert_eq!(v.iter().collect::<Vec<_>>(), vec![1, 5, 7, MAX_POSITION]);
    }

    #[test]
    fn empty_roundtrip() {
        let bytes = DeletionVector::new().serialize().unwrap();
        // size 12: magic + cookie 12346 + zero containers.
        assert_eq!(bytes.len(), 4 + 12 + 4);
        assert_eq!(bytes[..4], 12i32.to_be_bytes());
        assert!(DeletionVector::deserialize(&bytes).unwrap().is_empty());
    }

    /// Positions in an array container (key 0), a bitmap container (key 1) and a run container
    /// (key 2), plus one near `i32::MAX`.
    fn spread() -> DeletionVector {
        let mut v = dv(&[3, 70, 65_000]);
        for p in (65_536..131_072).step_by(3) {
            v.delete(p).unwrap();
        }
        for p in 131_072..181_072 {
            v.delete(p).unwrap();
        }
        v.delete(MAX_POSITION - 1).unwrap();
        v
    }

    #[test]
    fn containers_of_every_kind_roundtrip() {
        let v = spread();
        let bytes = v.serialize().unwrap();
        let back = DeletionVector::deserialize(&bytes).unwrap();
        assert_eq!(back, v);
        assert_eq!(back.cardinality(), 3 + 21_846 + 50_000 + 1);
        let stats = back.bitmap.statistics();
        assert_eq!(
            (
                stats.n_array_containers,
                stats.n_bitset_containers,
                stats.n_run_containers
            ),
            (2, 1, 1)
        );
        // The run container is in the stream: the cookie says so.
        assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 12_347);
        // Without the CRC the vector still reads.
        assert_eq!(
            DeletionVector::deserialize(&bytes[..bytes.len() - 4]).unwrap(),
            v
        );
    }

    #[test]
    fn corruption_is_detected() {
        let bytes = dv(&[1, 10, 100]).serialize().unwrap();
        for pos in 8..bytes.len() {
            let mut bad = bytes.clone();
            bad[pos] ^= 0x10;
            let err = DeletionVector::deserialize(&bad).unwrap_err();
            assert!(err.to_string().contains("CRC mismatch"), "{pos}: {err}");
        }
        for len in 0..bytes.len() {
            if len != bytes.len() - 4 {
                assert!(DeletionVector::deserialize(&bytes[..len]).is_err(), "{len}");
            }
        }
        let mut wrong_magic = bytes.clone();
        wrong_magic[4] ^= 1;
        let err = DeletionVector::deserialize(&wrong_magic).unwrap_err();
        assert!(err.to_string().contains("invalid magic number"), "{err}");
        let mut long = bytes.clone();
        long.push(0);
        assert!(DeletionVector::deserialize(&long).is_err());
    }

    /// Paimon Java's fixture `dvindex-64` (`{2, 3}` in a 64-bit vector), first vector.
    #[test]
    fn refuses_64_bit_vectors() {
        let file = hex(
            "01 00000024 d1d33964 01000000 00000000 00000000 003a3000 00010000\
             00000001 00100000 00020003 007a8138 47",
        );
        let err = DeletionVector::deserialize(&file[1..]).unwrap_err();
        assert!(
            matches!(&err, StorageError::Unsupported(m) if m.contains("64-bit deletion vectors are not supported")),
            "{err}"
        );
    }

    #[test]
    fn index_file_roundtrip_and_ranges() {
        let vectors = [
            ("data-a.parquet", spread()),
            ("data-b.parquet", dv(&[0])),
            ("data-c.parquet", DeletionVector::new()),
            (
                "data-d.parquet",
                dv(&[9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]),
            ),
        ];
        let refs: Vec<(&str, &DeletionVector)> = vectors.iter().map(|(n, v)| (*n, v)).collect();
        let (bytes, meta) = encode_index_file("index-u-3", &refs).unwrap();
        assert_eq!(bytes[0], 1);
        assert_eq!(meta.file_size, bytes.len() as i64);
        assert_eq!(meta.row_count, 4);
        let ranges = meta.dv_ranges.as_ref().unwrap();
        let mut expected_offset = 1;
        for ((name, v), m) in vectors.iter().zip(ranges) {
            assert_eq!(m.data_file_name, *name);
            assert_eq!(m.offset, expected_offset);
            assert_eq!(m.cardinality, Some(v.cardinality() as i64));
            let range = byte_range(m).unwrap();
            assert_eq!(bytes[range.clone()][..4], m.length.to_be_bytes());
            assert_eq!(read_range(&bytes[range.clone()], m).unwrap(), *v);
            assert_eq!(read_from_index_file(&bytes, m).unwrap(), *v);
            expected_offset = range.end as i32;
        }
        assert_eq!(expected_offset as usize, bytes.len());

        let mut bad_version = bytes.clone();
        bad_version[0] = 2;
        assert!(read_from_index_file(&bad_version, &ranges[1]).is_err());
        let wrong_length = DeletionVectorMeta {
            length: ranges[1].length + 1,
            ..ranges[1].clone()
        };
        assert!(read_from_index_file(&bytes, &wrong_length).is_err());
        let past_end = DeletionVectorMeta {
            offset: bytes.len() as i32,
            ..ranges[1].clone()
        };
        assert!(read_from_index_file(&bytes, &past_end).is_err());
        assert!(encode_index_file("x", &[("a", &dv(&[1])), ("a", &dv(&[2]))]).is_err());

        let (empty, meta) = encode_index_file("index-u-4", &[]).unwrap();
        assert_eq!((empty, meta.row_count, meta.file_size), (vec![1], 0, 1));
    }

    #[tokio::test]
    async fn writes_and_reads_through_file_io() {
        let io = FileIO::new(Arc::new(InMemory::new()), None);
        let table = Path::from("db.db/t");
        let names = IndexFileNamer::new();
        let (a, b) = (dv(&[1, 2]), spread());
        let meta = write_index_file(&io, &table, &names, &[("a", &a), ("b", &b)])
            .await
            .unwrap();
        assert!(meta.file_name.starts_with("index-") && meta.file_name.ends_with("-0"));
        assert!(names.next_name().ends_with("-1"));
        let path = index_file_path(&table, &meta).unwrap();
        assert_eq!(path.as_ref(), format!("db.db/t/index/{}", meta.file_name));
        assert_eq!(io.read(&path).await.unwrap().len() as i64, meta.file_size);

        let got = read_deletion_vectors(&io, &table, &meta, ["b", "missing"])
            .await
            .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got["b"], b);
        let got = read_deletion_vectors(&io, &table, &meta, ["a", "b"])
            .await
            .unwrap();
        assert_eq!((got["a"].clone(), got["b"].clone()), (a, b));

        let external = IndexFileMeta {
            external_path: Some("s3://x/index-1".into()),
            ..meta
        };
        assert!(index_file_path(&table, &external).is_err());
    }
}
