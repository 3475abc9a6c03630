//! Paimon's fixed-bucket function (`bucket = N > 0`): which `bucket-<B>` folder a key belongs to.
//!
//! Every writer of a table must put a key into the same bucket, or a primary-key table holds two
//! live versions of one key (and readers merge only within a bucket). Paimon Java's
//! `DefaultBucketFunction` hashes the bucket key's BinaryRow bytes (without the manifest's arity
//! prefix, RowKind `+I`) with `MurmurHashUtils.hashBytesByWords`: Murmur3-32, seed 42, over
//! little-endian 4-byte words, finished with the byte length. The bucket is
//! `Math.abs(hash % numBuckets)`: Java's truncating remainder, so the result is in `0..N` even for
//! `Integer.MIN_VALUE` (the remainder is taken before `abs`).

use arrow::array::ArrayRef;

use crate::storage::StorageError;
use crate::storage::spec::binary_row::ArrowRowEncoder;
use crate::storage::spec::types::PaimonType;

/// Java `MurmurHashUtils.DEFAULT_SEED`.
const SEED: u32 = 42;
const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

fn mix_k1(k1: u32) -> u32 {
    k1.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

fn mix_h1(h1: u32, k1: u32) -> u32 {
    (h1 ^ k1)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

fn fmix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// Java `BinaryRow.hashCode()` of row bytes (no arity prefix).
///
/// BinaryRow bytes are a multiple of 8 long. Any tail bytes are mixed one by one, sign-extended,
/// as Java's `MurmurHashUtils.hashBytes` (what `BinarySection.hashCode` uses) does.
pub fn hash_row(row_bytes: &[u8]) -> i32 {
    let mut words = row_bytes.chunks_exact(4);
    let mut h1 = SEED;
    for word in &mut words {
        let k1 = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        h1 = mix_h1(h1, mix_k1(k1));
    }
    for &byte in words.remainder() {
        h1 = mix_h1(h1, mix_k1(byte as i8 as i32 as u32));
    }
    fmix(h1 ^ row_bytes.len() as u32) as i32
}

/// `Math.abs(hash % numBuckets)`.
///
/// # Panics
/// If `num_buckets <= 0` (Java asserts the same); [`bucket_ids`] checks it and returns an error.
pub fn bucket_of_hash(hash: i32, num_buckets: i32) -> i32 {
    assert!(
        num_buckets > 0,
        "a fixed bucket count must be positive, got {num_buckets}"
    );
    // The remainder lies in (-n, n), so `abs` cannot overflow.
    (hash % num_buckets).abs()
}

/// The bucket of every row of a batch of bucket-key `columns` (of `types`), in a table of
/// `num_buckets` fixed buckets. One reused row buffer serves the whole batch.
pub fn bucket_ids(
    columns: &[ArrayRef],
    types: &[PaimonType],
    num_buckets: i32,
) -> Result<Vec<i32>, StorageError> {
    if num_buckets <= 0 {
        return Err(StorageError::format(format!(
            "a fixed bucket count must be positive, got {num_buckets}"
        )));
    }
    if columns.is_empty() {
        return Err(StorageError::format(
            "a bucket key needs at least one column",
        ));
    }
    let mut encoder = ArrowRowEncoder::new(columns, types)?;
    let rows = encoder.num_rows();
    let mut buckets = Vec::with_capacity(rows);
    for row in 0..rows {
        let bytes = encoder.encode(row)?;
        buckets.push(bucket_of_hash(hash_row(bytes), num_buckets));
    }
    Ok(buckets)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, Int64Array, StringArray};

    use super::*;
    use crate::storage::spec::binary_row::{BinaryRowWriter, row_from_arrays, serialize};
    use crate::storage::spec::datum::Datum;
    use crate::storage::spec::types::{MAX_LENGTH, TypeKind};

    fn int() -> PaimonType {
        PaimonType::new(TypeKind::Int, false)
    }

    fn bucket_of(values: &[Datum], types: &[PaimonType], n: i32) -> i32 {
        bucket_of_hash(hash_row(&serialize(values, types)[4..]), n)
    }

    /// Paimon Java's `FixedBucketRowKeyExtractorTest.testBucket`: row (5, 6, 7) of INT columns,
    /// 100 buckets.
    #[test]
    fn matches_paimon_java_test_vectors() {
        let (a, b, c) = (Datum::Int(5), Datum::Int(6), Datum::Int(7));
        assert_eq!(bucket_of(std::slice::from_ref(&a), &[int()], 100), 96);
        assert_eq!(bucket_of(&[a.clone(), b.clone()], &[int(), int()], 100), 27);
        assert_eq!(bucket_of(&[a, b, c], &[int(), int(), int()], 100), 40);
    }

    /// Hashes pypaimon 2.1.0's `_hash_bytes_by_words` gave for these bytes.
    #[test]
    fn matches_recorded_hashes() {
        assert_eq!(hash_row(&[]), 142593372);
        assert_eq!(hash_row(&[0; 8]), -1670924195);
        let bigint_one = serialize(
            &[Datum::BigInt(1)],
            &[PaimonType::nullable(TypeKind::BigInt)],
        );
        assert_eq!(hash_row(&bigint_one[4..]), 1465514398);
        let mut abc = serialize(
            &[Datum::String("abc".into())],
            &[PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH))],
        )[4..]
            .to_vec();
        abc.extend_from_slice(&[0; 4]);
        assert_eq!(hash_row(&abc), 1350067436);
    }

    #[test]
    fn java_remainder_semantics() {
        assert_eq!(bucket_of_hash(-7, 3), 1);
        assert_eq!(bucket_of_hash(7, 3), 1);
        assert_eq!(bucket_of_hash(i32::MIN, 3), 2);
        assert_eq!(bucket_of_hash(i32::MIN, 128), 0);
        assert_eq!(bucket_of_hash(i32::MIN, i32::MAX), 1);
        assert_eq!(bucket_of_hash(i32::MAX, 1), 0);
        assert_eq!(bucket_of_hash(-1, i32::MAX), 1);
        for h in [i32::MIN, -1_000_003, -1, 0, 1, 999_999_937, i32::MAX] {
            for n in [1, 2, 3, 16, 100, 128, i32::MAX] {
                let b = bucket_of_hash(h, n);
                assert!((0..n).contains(&b));
                // Java: Math.abs(h % n), computed in i64 to be sure.
                assert_eq!(b as i64, (h as i64 % n as i64).abs());
            }
        }
    }

    #[test]
    fn tail_bytes_mix_like_java_hash_bytes() {
        // Not reachable with BinaryRow bytes; pinned so the behaviour is deliberate.
        assert_ne!(hash_row(&[1, 2, 3, 4, 5]), hash_row(&[1, 2, 3, 4]));
        assert_ne!(hash_row(&[0x80]), hash_row(&[0x00]));
    }

    #[test]
    fn batch_buckets_equal_row_buckets() {
        let ids: ArrayRef = Arc::new(Int64Array::from(
            (0..1000)
                .map(|i| i * 7919 - 3_000_000)
                .collect::<Vec<i64>>(),
        ));
        let names: ArrayRef = Arc::new(StringArray::from(
            (0..1000)
                .map(|i| (i % 5 != 0).then(|| "k".repeat(i % 23)))
                .collect::<Vec<_>>(),
        ));
        let types = [
            PaimonType::new(TypeKind::BigInt, false),
            PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH)),
        ];
        let columns = [ids, names];
        for n in [1, 3, 16, 128] {
            let buckets = bucket_ids(&columns, &types, n).unwrap();
            assert_eq!(buckets.len(), 1000);
            let mut w = BinaryRowWriter::new(2);
            for (row, &b) in buckets.iter().enumerate() {
                row_from_arrays(&mut w, &columns, &types, row).unwrap();
                assert_eq!(b, bucket_of_hash(hash_row(w.bytes()), n));
            }
            if n == 16 {
                let used: std::collections::HashSet<_> = buckets.iter().collect();
                assert_eq!(used.len(), 16, "keys spread over all buckets");
            }
        }
    }

    #[test]
    fn rejects_bad_input() {
        let a: ArrayRef = Arc::new(Int32Array::from(vec![1, 2]));
        let b: ArrayRef = Arc::new(Int32Array::from(vec![1]));
        assert!(bucket_ids(std::slice::from_ref(&a), &[int()], 0).is_err());
        assert!(bucket_ids(std::slice::from_ref(&a), &[int()], -1).is_err());
        assert!(bucket_ids(&[], &[], 4).is_err());
        assert!(bucket_ids(&[a.clone(), b], &[int(), int()], 4).is_err());
        assert!(bucket_ids(std::slice::from_ref(&a), &[int(), int()], 4).is_err());
        assert!(bucket_ids(&[a], &[PaimonType::nullable(TypeKind::Date)], 4).is_err());
        let empty: ArrayRef = Arc::new(Int32Array::from(Vec::<i32>::new()));
        assert_eq!(
            bucket_ids(&[empty], &[int()], 4).unwrap(),
            Vec::<i32>::new()
        );
    }
}
