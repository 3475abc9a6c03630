//! Paimon Java's bytes of a file index: the hash of a value (`FastHash`), the bloom filter
//! (`BloomFilter64` in `BloomFilterFileIndex`'s serialization) and the container of a data file's
//! indexes (`FileIndexFormat`). Pure functions of values and bytes; see the parent module for
//! where they are written and read.

use crate::storage::StorageError;
use crate::storage::spec::datum::{Datum, Timestamp};
use crate::storage::spec::types::{PaimonType, TypeKind};

type Result<T> = std::result::Result<T, StorageError>;

/// First eight bytes of every file index (Java `FileIndexFormat.MAGIC`).
pub const MAGIC: i64 = 1_493_475_289_347_502;
/// The one container version (Java `FileIndexFormat.Version.V_1`).
pub const VERSION: i32 = 1;
/// Start of an index that holds nothing (Java `EMPTY_INDEX_FLAG`).
const EMPTY_INDEX: i32 = -1;
/// Index type name of bloom filters (Java `BloomFilterFileIndexFactory.BLOOM_FILTER`).
pub const BLOOM_FILTER: &str = "bloom-filter";

// --- hashing (Java `FastHash`) -----------------------------------------------------------------

/// Thomas Wang's 64-bit integer hash (Java `FastHashVisitor.getLongHash`).
pub fn long_hash(key: i64) -> i64 {
    let mut key = (!key).wrapping_add(key << 21);
    key ^= key >> 24;
    key = key.wrapping_add(key << 3).wrapping_add(key << 8);
    key ^= key >> 14;
    key = key.wrapping_add(key << 2).wrapping_add(key << 4);
    key ^= key >> 28;
    key.wrapping_add(key << 31)
}

/// XXH64 with seed 0 (Java `LongHashFunction.xx().hashBytes`).
pub fn bytes_hash(bytes: &[u8]) -> i64 {
    twox_hash::XxHash64::oneshot(0, bytes) as i64
}

/// Whether Paimon's bloom filters hash values of `ty` (Java refuses booleans, decimals and
/// nested types).
pub fn hashable(ty: &PaimonType) -> bool {
    matches!(
        ty.kind,
        TypeKind::TinyInt
            | TypeKind::SmallInt
            | TypeKind::Int
            | TypeKind::BigInt
            | TypeKind::Float
            | TypeKind::Double
            | TypeKind::Char(_)
            | TypeKind::VarChar(_)
            | TypeKind::Binary(_)
            | TypeKind::VarBinary(_)
            | TypeKind::Date
            | TypeKind::Time(_)
            | TypeKind::Timestamp(_)
            | TypeKind::TimestampLtz(_)
    )
}

/// The 64-bit hash Java's bloom filter takes for `value` of type `ty` (`None` for NULL and for
/// values of types it does not hash).
pub fn hash_datum(value: &Datum, ty: &PaimonType) -> Option<i64> {
    let ts = |t: &Timestamp, precision: u8| {
        long_hash(if precision <= 3 {
            t.millis
        } else {
            t.to_micros()
        })
    };
    Some(match (&ty.kind, value) {
        (TypeKind::TinyInt, Datum::TinyInt(v)) => long_hash(*v as i64),
        (TypeKind::SmallInt, Datum::SmallInt(v)) => long_hash(*v as i64),
        (TypeKind::Int, Datum::Int(v)) => long_hash(*v as i64),
        (TypeKind::BigInt, Datum::BigInt(v)) => long_hash(*v),
        // Java's floatToIntBits / doubleToLongBits: one NaN for all.
        (TypeKind::Float, Datum::Float(v)) => {
            let bits = if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() };
            long_hash(bits as i32 as i64)
        }
        (TypeKind::Double, Datum::Double(v)) => {
            let bits = if v.is_nan() {
                0x7ff8_0000_0000_0000
            } else {
                v.to_bits()
            };
            long_hash(bits as i64)
        }
        (TypeKind::Char(_) | TypeKind::VarChar(_), Datum::String(s)) => bytes_hash(s.as_bytes()),
        (TypeKind::Binary(_) | TypeKind::VarBinary(_), Datum::Binary(b)) => bytes_hash(b),
        (TypeKind::Date, Datum::Date(v)) => long_hash(*v as i64),
        (TypeKind::Time(_), Datum::Time(v)) => long_hash(*v as i64),
        (TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p), Datum::Timestamp(t)) => ts(t, *p),
        _ => return None,
    })
}

/// Whether an index over values of type `written` answers for values of type `asked` (the
/// column's type when the file was written and now): same hash of equal values.
pub fn same_hashing(written: &PaimonType, asked: &PaimonType) -> bool {
    use TypeKind::*;
    let ints = |k: &TypeKind| matches!(k, TinyInt | SmallInt | Int | BigInt);
    match (&written.kind, &asked.kind) {
        (a, b) if ints(a) && ints(b) => true,
        (VarChar(_), VarChar(_)) | (Date, Date) | (Time(_), Time(_)) => true,
        (Binary(_) | VarBinary(_), Binary(_) | VarBinary(_)) => true,
        (Timestamp(a), Timestamp(b)) | (TimestampLtz(a), TimestampLtz(b)) => (*a <= 3) == (*b <= 3),
        _ => false,
    }
}

/// Whether tarn may skip a file by its filter for an equality on a column of type `ty`: SQL
/// equality must be equality of what is hashed (not so for floats, where `-0.0 = 0.0`, nor for
/// CHAR, compared without trailing blanks).
pub fn prunable(ty: &PaimonType) -> bool {
    hashable(ty)
        && !matches!(
            ty.kind,
            TypeKind::Float | TypeKind::Double | TypeKind::Char(_)
        )
}

// --- BloomFilter64 ----------------------------------------------------------------------------

/// Java `BloomFilter64`: `k` bit positions per 64-bit hash, from its two 32-bit halves.
#[derive(Debug, Clone, PartialEq)]
pub struct BloomFilter64 {
    num_hash_functions: i32,
    bits: Vec<u8>,
}

impl BloomFilter64 {
    /// An empty filter for `items` values at false-positive rate `fpp`, sized as Java sizes it.
    pub fn new(items: i32, fpp: f64) -> Self {
        let ln2 = 2f64.ln();
        let nb = (-(items as i64) as f64 * fpp.ln() / (ln2 * ln2)) as i32;
        let num_bits = nb.wrapping_add(8 - nb % 8);
        let k = ((num_bits as f64 / items as f64 * ln2).round() as i64) as i32;
        Self {
            num_hash_functions: k.max(1),
            bits: vec![0; (num_bits / 8).max(1) as usize],
        }
    }

    pub fn num_hash_functions(&self) -> i32 {
        self.num_hash_functions
    }

    /// Bytes of the bit set.
    pub fn byte_len(&self) -> usize {
        self.bits.len()
    }

    fn positions(&self, hash: i64) -> impl Iterator<Item = usize> + '_ {
        let num_bits = (self.bits.len() * 8) as i32;
        let hash1 = hash as i32;
        let hash2 = ((hash as u64) >> 32) as i32;
        (1..=self.num_hash_functions).map(move |i| {
            let mut combined = hash1.wrapping_add(i.wrapping_mul(hash2));
            if combined < 0 {
                combined = !combined;
            }
            (combined % num_bits) as usize
        })
    }

    pub fn add_hash(&mut self, hash: i64) {
        let positions: Vec<usize> = self.positions(hash).collect();
        for p in positions {
            self.bits[p / 8] |= 1 << (p % 8);
        }
    }

    pub fn test_hash(&self, hash: i64) -> bool {
        self.positions(hash)
            .all(|p| self.bits[p / 8] & (1 << (p % 8)) != 0)
    }

    /// The index body: `k` as i32 big-endian, then the bits.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.bits.len());
        out.extend_from_slice(&self.num_hash_functions.to_be_bytes());
        out.extend_from_slice(&self.bits);
        out
    }

    /// Reads a body as Java's reader does (its `k` from sign-extended bytes).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        if bytes.len() < 5 {
            return Err(StorageError::format(format!(
                "bloom filter index of {} bytes is too short",
                bytes.len()
            )));
        }
        let b = |i: usize| bytes[i] as i8 as i32;
        let k = (b(0) << 24)
            .wrapping_add(b(1) << 16)
            .wrapping_add(b(2) << 8)
            .wrapping_add(b(3));
        Ok(Self {
            num_hash_functions: k,
            bits: bytes[4..].to_vec(),
        })
    }
}

// --- the container (Java `FileIndexFormat`) ------------------------------------------------------

/// One index in a container: its column, type and body (`None`: empty index).
#[derive(Debug, Clone, PartialEq)]
pub struct IndexEntry {
    pub column: String,
    pub index_type: String,
    pub body: Option<Vec<u8>>,
}

/// A container of `entries` (grouped by column in order of first appearance).
pub fn write_container(entries: &[IndexEntry]) -> Result<Vec<u8>> {
    let mut columns: Vec<(&str, Vec<&IndexEntry>)> = Vec::new();
    for e in entries {
        match columns.iter_mut().find(|(c, _)| *c == e.column) {
            Some((_, list)) => list.push(e),
            None => columns.push((&e.column, vec![e])),
        }
    }
    let mut names = Vec::new();
    for (column, list) in &columns {
        java_utf(&mut names, column)?;
        for e in list {
            java_utf(&mut names, &e.index_type)?;
        }
    }
    let head_length = 8 + 4 + 4 + 4 + entries.len() * 8 + columns.len() * 4 + 4 + names.len();
    let body_length: usize = entries
        .iter()
        .map(|e| e.body.as_ref().map_or(0, Vec::len))
        .sum();
    let int = |n: usize| -> Result<i32> {
        i32::try_from(n).map_err(|_| StorageError::format("file index larger than 2 GiB"))
    };
    let mut out = Vec::with_capacity(head_length + body_length);
    out.extend_from_slice(&MAGIC.to_be_bytes());
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&int(head_length)?.to_be_bytes());
    out.extend_from_slice(&int(columns.len())?.to_be_bytes());
    let mut start = head_length;
    for (column, list) in &columns {
        java_utf(&mut out, column)?;
        out.extend_from_slice(&int(list.len())?.to_be_bytes());
        for e in list {
            java_utf(&mut out, &e.index_type)?;
            let (at, len) = match &e.body {
                None => (EMPTY_INDEX, 0),
                Some(b) => (int(start)?, int(b.len())?),
            };
            out.extend_from_slice(&at.to_be_bytes());
            out.extend_from_slice(&len.to_be_bytes());
            start += e.body.as_ref().map_or(0, Vec::len);
        }
    }
    out.extend_from_slice(&0i32.to_be_bytes());
    debug_assert_eq!(out.len(), head_length);
    // Bodies in head order: by column, then by index.
    for (_, list) in &columns {
        for e in list {
            if let Some(b) = &e.body {
                out.extend_from_slice(b);
            }
        }
    }
    Ok(out)
}

/// The entries of a container.
pub fn read_container(bytes: &[u8]) -> Result<Vec<IndexEntry>> {
    let bad = |why: &str| StorageError::format(format!("file index: {why}"));
    let mut r = Reader { bytes, at: 0 };
    if r.i64()? != MAGIC {
        return Err(bad("not a file index (wrong magic number)"));
    }
    let version = r.i32()?;
    if version != VERSION {
        return Err(bad(&format!("version {version} is not supported")));
    }
    let _head_length = r.i32()?;
    let columns = r.i32()?;
    let mut out = Vec::new();
    for _ in 0..columns.max(0) {
        let column = r.utf()?;
        for _ in 0..r.i32()?.max(0) {
            let index_type = r.utf()?;
            let (start, length) = (r.i32()?, r.i32()?);
            let body = if start == EMPTY_INDEX {
                None
            } else {
                let (s, l) = (start as usize, length as usize);
                if start < 0 || length < 0 || s + l > bytes.len() {
                    return Err(bad("an index lies outside the file"));
                }
                Some(bytes[s..s + l].to_vec())
            };
            out.push(IndexEntry {
                column: column.clone(),
                index_type,
                body,
            });
        }
    }
    Ok(out)
}

/// Java's `DataOutput.writeUTF`: a u16 byte count, then modified UTF-8 (NUL as two bytes,
/// characters beyond the BMP as two three-byte surrogates).
fn java_utf(out: &mut Vec<u8>, text: &str) -> Result<()> {
    let mut encoded = Vec::with_capacity(text.len());
    for unit in text.encode_utf16() {
        match unit {
            0x0001..=0x007f => encoded.push(unit as u8),
            0x0000 | 0x0080..=0x07ff => {
                encoded.push(0xc0 | (unit >> 6) as u8);
                encoded.push(0x80 | (unit & 0x3f) as u8);
            }
            _ => {
                encoded.push(0xe0 | (unit >> 12) as u8);
                encoded.push(0x80 | ((unit >> 6) & 0x3f) as u8);
                encoded.push(0x80 | (unit & 0x3f) as u8);
            }
        }
    }
    let len = u16::try_from(encoded.len())
        .map_err(|_| StorageError::format(format!("file index name too long: {text}")))?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&encoded);
    Ok(())
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let end = self.at + n;
        if end > self.bytes.len() {
            return Err(StorageError::format("file index: truncated head"));
        }
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    /// Java's `DataInput.readUTF`.
    fn utf(&mut self) -> Result<String> {
        let len = u16::from_be_bytes(self.take(2)?.try_into().expect("2 bytes")) as usize;
        let b = self.take(len)?;
        let bad = || StorageError::format("file index: malformed name");
        let mut units = Vec::with_capacity(len);
        let mut i = 0;
        while i < b.len() {
            let c = b[i] as u16;
            let (unit, width) = match c >> 4 {
                0..=7 => (c, 1),
                12 | 13 if i + 1 < b.len() => (((c & 0x1f) << 6) | (b[i + 1] as u16 & 0x3f), 2),
                14 if i + 2 < b.len() => (
                    ((c & 0x0f) << 12) | ((b[i + 1] as u16 & 0x3f) << 6) | (b[i + 2] as u16 & 0x3f),
                    3,
                ),
                _ => return Err(bad()),
            };
            units.push(unit);
            i += width;
        }
        String::from_utf16(&units).map_err(|_| bad())
    }
}
